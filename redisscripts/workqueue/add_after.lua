-- ADD AFTER: add the key at a time, unless an earlier time is recorded for it already. KEYS and ARGV: ``ADD_AFTER``
-- in workqueue/delaying.py. -> 1 recorded | 0 an earlier time stays
return redis.call('ZADD', KEYS[1], 'LT', ARGV[1], ARGV[2])
