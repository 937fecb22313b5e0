-- uses: cache/index, cache/ordering
-- DELETE: remove an object and its index entries, leaving a tombstone against late write-throughs of older versions
-- (unless the list that no longer has it says so: no version). A DELETED event older than a pending write-through
-- (the object deleted and created again) leaves it alone. KEYS and ARGV: ``DELETE`` in cache/store.py.
-- -> 1 removed | 0 left alone
local cur = redis.call('HMGET', KEYS[1], 'pend', 'hist')
if ARGV[1] ~= '' and cur[1] and cur[1] ~= ARGV[1] then
  redis.call('HSET', KEYS[1], 'hist', remember(cur[2], ARGV[1]))
  return 0
end
local old = redis.call('HGET', KEYS[1], 'idx')
if old and old ~= '' then
  for entry in string.gmatch(old, '[^\n]+') do unindex(ARGV[3], entry, ARGV[2]) end
end
redis.call('DEL', KEYS[1])
if ARGV[1] ~= '' then
  redis.call('HSET', KEYS[1], 'rv', ARGV[1], 'tomb', '1', 'hist', remember(cur[2], ARGV[1]))
  redis.call('EXPIRE', KEYS[1], tonumber(ARGV[4]))
end
return 1
