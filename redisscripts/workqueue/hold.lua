-- uses: workqueue/queue
-- HOLD: the key runs once when its window ends (the delaying queue releases it), however many adds come meanwhile.
-- KEYS and ARGV: ``HOLD`` in workqueue/delaying.py. -> 1 held | 0 a mark was there already (a queued or owed run
-- covers the window's adds too)
redis.call('ZADD', KEYS[2], 'LT', ARGV[4], ARGV[5])
if workqueue_hold(KEYS[1], ARGV[1], clock(ARGV[2]), ARGV[3]) then
  return 1
end
return 0
