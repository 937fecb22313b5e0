-- uses: workqueue/queue, engine/own_writes
-- SETTLE (a run's end, in the same script as the queue's DONE and before it, while the run still holds the key):
-- record the run's write ids, so that their late watch events are skipped, and judge the events deferred to the run:
-- one that is not the key's own write is someone else's change, and the key is marked owed (q = 0) for DONE to
-- publish. Atomic with DONE, so no event falls between the judgement and the release. KEYS and ARGV: ``SETTLE`` in
-- engine/own_writes.py. -> {deferred, foreign}: how many events were deferred to the run, and how many of them were
-- someone else's
local state = redis.call('MGET', KEYS[1], KEYS[4], KEYS[3])
local known
if #ARGV >= 4 then
  known = record(KEYS[3], state[3], {unpack(ARGV, 4)}, ARGV[3])
else
  known = select(2, ids_of(state[3]))
end
local deferred = ids_of(state[2])
local foreign = 0
for _, id in ipairs(deferred) do
  if not known[id] then
    foreign = foreign + 1
  end
end
if state[2] then
  redis.call('DEL', KEYS[4])
end
if foreign > 0 and not state[1] then
  redis.call('SET', KEYS[1], mark(ARGV[1], now_ms(), 0, '0'), 'EX', ARGV[2])
end
return {#deferred, foreign}
