-- uses: workqueue/queue
-- DONE: release the lease, and publish the one more run an add during the run asked for. KEYS and ARGV: ``DONE`` in
-- workqueue/queue.py. -> {0} the lease is someone else's | {1} nothing owed | {2, msg_id, class} publish one more run
-- A key marked while its run went on (q = 0: the holder owes the re-publish) runs exactly once more; a mark whose
-- message is already queued (q = 1: the lease lapsed meanwhile) or held for its window (q = 2: the delaying queue
-- publishes it) needs nothing from this run.
local state = redis.call('MGET', KEYS[1], KEYS[2])
local cur, a = state[1], state[2]
if a and a ~= ARGV[1] then
  return {0}
end
if a then
  redis.call('DEL', KEYS[2])
end
redis.call('ZREM', KEYS[3], ARGV[3])
if not cur then
  return {1}
end
local _, _, cls, q = parse(cur)
if q ~= '0' then
  return {1}
end
redis.call('SET', KEYS[1], mark(ARGV[2], now_ms(), cls, '1'), 'EX', ARGV[4])
return {2, ARGV[2], cls}
