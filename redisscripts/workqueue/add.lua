-- uses: workqueue/queue
-- ADD: the key needs a run. KEYS and ARGV: ``ADD`` in workqueue/queue.py.
-- -> {0} coalesced | {1} pending-while-running | {2, msg_id, class, pushed} publish (pushed 1: the message is on
-- the queue list already)
return workqueue_push(workqueue_add(KEYS[1], KEYS[2], ARGV[1], tonumber(ARGV[2]), ARGV[3], ARGV[4], clock(ARGV[5]), nil,
                          ARGV[6] == '1'), KEYS[3], ARGV[7])
