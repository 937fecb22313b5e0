-- WAKE (a run's last round trip, per key the run wakes): ADD, after recording the run's writes as already seen by
-- the woken key, so that their watch events, which wake that key too, do not run it once more (workers/own_writes.py).
-- KEYS pending, active, selfwrites[, queue list]; ARGV msg_id, class, pending_ttl_s, stale_ms, record_ttl_ms, n,
-- n write ids[, message] -> ADD's reply
local n = tonumber(ARGV[6])
if n > 0 then
  redis.call('SADD', KEYS[3], unpack(ARGV, 7, 6 + n))
  redis.call('PEXPIRE', KEYS[3], ARGV[5])
end
return gate_push(gate_add(KEYS[1], KEYS[2], ARGV[1], tonumber(ARGV[2]), ARGV[3], ARGV[4]), KEYS[4], ARGV[7 + n])
