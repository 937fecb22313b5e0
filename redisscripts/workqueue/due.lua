-- DUE: the keys whose time came. KEYS and ARGV: ``DUE`` in workqueue/delaying.py. -> keys
return redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[2]))
