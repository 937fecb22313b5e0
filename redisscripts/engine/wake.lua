-- uses: workqueue/queue, engine/own_writes
-- WAKE (a run's last round trip, per key the run wakes): ADD, after recording the run's writes as already seen by
-- the woken key, so that their watch events, which wake that key too, do not run it once more (engine/own_writes.py).
-- While a run of the woken key is going on, the writes are deferred to it instead, as their watch events would be:
-- its SETTLE runs the key once more only if it did not get those versions itself. WAKE also ends the run's promise to
-- wake the key (``promised``, when it holds the run's ``token``): the events held meanwhile (``held``) are covered by
-- this ADD, or deferred with the writes to the key's run going on. Given ``take`` (a lease token), a key that is idle
-- (no run going on, none owed) is not queued: the waking run takes its lease and goes on with it in the same task,
-- which saves the message; should that run die, the lease reaper runs the key as for any run.
-- KEYS and ARGV: ``WAKE`` in engine/own_writes.py.
-- -> ADD's reply | {4} deferred to the run going on | {6} taken by the waking run
local seen = {unpack(ARGV, 13)}
local state = redis.call('MGET', KEYS[1], KEYS[2], KEYS[3], KEYS[5], KEYS[6])
if state[4] == ARGV[9] then
  redis.call('DEL', KEYS[5])
end
local held = ids_of(state[5])
if state[5] then
  redis.call('DEL', KEYS[6])
end
if #seen > 0 or #held > 0 then
  if state[2] then
    for _, id in ipairs(held) do
      table.insert(seen, id)
    end
    defer(KEYS[4], seen, ARGV[7])
    return {4}
  end
  if #seen > 0 then
    record(KEYS[3], state[3], seen, ARGV[6])
  end
end
if ARGV[10] ~= '' and not state[1] and not state[2] then
  local lease_ms = tonumber(ARGV[11])
  redis.call('SET', KEYS[2], ARGV[10], 'PX', lease_ms)
  redis.call('ZADD', KEYS[7], clock(ARGV[5]) + lease_ms, ARGV[12])
  return {6}
end
return workqueue_push(workqueue_add(KEYS[1], KEYS[2], ARGV[1], tonumber(ARGV[2]), ARGV[3], ARGV[4], clock(ARGV[5]),
                                    state), KEYS[8], ARGV[8])
