-- uses: workqueue/queue, engine/own_writes
-- OBSERVE (the watcher, per key a watch event wakes): the own-write check, then ADD. KEYS and ARGV: ``OBSERVE`` in
-- engine/own_writes.py. -> ADD's reply | {3} the key's own write (skip) | {4} deferred to the run going on | {5} held
-- for the run that promised to wake the key (its WAKE covers the event)
local state = redis.call('MGET', KEYS[1], KEYS[2], KEYS[3], KEYS[5])
if ARGV[6] ~= '' and recorded(state[3], ARGV[6]) then
  return {3}
end
if state[4] then
  defer(KEYS[6], {ARGV[6] ~= '' and ARGV[6] or UNKNOWN_WRITE}, ARGV[7])
  return {5}
end
if ARGV[6] ~= '' and state[2] then
  defer(KEYS[4], {ARGV[6]}, ARGV[7])
  return {4}
end
return workqueue_push(workqueue_add(KEYS[1], KEYS[2], ARGV[1], tonumber(ARGV[2]), ARGV[3], ARGV[4], clock(ARGV[5]),
                                    state), KEYS[7], ARGV[8])
