-- ADD: KEYS pending, active[, queue list]; ARGV msg_id, class, pending_ttl_s, stale_ms, now_ms, release (1: the
-- delaying queue releasing a key whose time came)[, message]
-- -> {0} coalesced | {1} pending-while-running | {2, msg_id, class, pushed} publish (pushed 1: the message is on
-- the queue list already)
return workqueue_push(workqueue_add(KEYS[1], KEYS[2], ARGV[1], tonumber(ARGV[2]), ARGV[3], ARGV[4], clock(ARGV[5]), nil,
                          ARGV[6] == '1'), KEYS[3], ARGV[7])
