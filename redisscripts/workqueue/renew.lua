-- uses: workqueue/queue
-- RENEW: extend the lease if it is still ours. KEYS and ARGV: ``RENEW`` in workqueue/queue.py.
-- -> 1 renewed | 0 lease lost
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return 0
end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
redis.call('ZADD', KEYS[2], now_ms() + tonumber(ARGV[2]), ARGV[3])
return 1
