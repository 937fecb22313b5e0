-- ADD: KEYS pending, active; ARGV msg_id, class, pending_ttl_s, stale_ms
-- -> {0} coalesced | {1} pending-while-running | {2, msg_id, class} publish
return gate_add(KEYS[1], KEYS[2], ARGV[1], tonumber(ARGV[2]), ARGV[3], ARGV[4])
