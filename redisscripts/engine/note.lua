-- uses: engine/own_writes
-- NOTE (a run's end, per key it holds for a window): the run's write ids count as that key's own, as WAKE records
-- them, so their watch events do not run it once more; deferred to the key's run going on instead, as an event's.
-- KEYS and ARGV: ``NOTE`` in engine/own_writes.py. -> 1 recorded | 2 deferred
local state = redis.call('MGET', KEYS[1], KEYS[2])
if state[1] then
  defer(KEYS[3], {unpack(ARGV, 3)}, ARGV[2])
  return 2
end
record(KEYS[2], state[2], {unpack(ARGV, 3)}, ARGV[1])
return 1
