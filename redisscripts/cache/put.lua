-- uses: cache/index, cache/ordering
-- PUT: store an object's version unless the cache knows a later one (cache/ordering.lua). KEYS and ARGV: ``PUT`` in
-- cache/store.py. -> 1 stored | 0 left alone
-- Most puts are a MODIFIED whose index memberships did not change: then the script costs one HMGET and one HSET
-- (index writes only for the entries that changed).
local cur = redis.call('HMGET', KEYS[1], 'rv', 'idx', 'tomb', 'pend', 'hist')
local rv, mode = ARGV[1], ARGV[3]
local watched = mode == 'w' or mode == 'l'
if watched then
  if mode == 'w' and cur[4] and cur[4] ~= rv then
    redis.call('HSET', KEYS[1], 'hist', remember(cur[5], rv))
    return 0
  end
elseif cur[1] then
  if cur[1] == rv or delivered(cur[5], rv) then return 0 end
  if cur[3] and mode ~= 't' then return 0 end
elseif mode ~= 't' then
  return 0
end
local idx = table.concat(ARGV, '\n', 6)
local old = cur[2] or ''
if idx ~= old then
  local new, had = {}, {}
  for i = 6, #ARGV do new[ARGV[i]] = true end
  for entry in string.gmatch(old, '[^\n]+') do
    had[entry] = true
    if not new[entry] then unindex(ARGV[5], entry, ARGV[4]) end
  end
  for i = 6, #ARGV do
    if not had[ARGV[i]] then index(ARGV[5], ARGV[i], ARGV[4]) end
  end
end
if watched then
  redis.call('HSET', KEYS[1], 'rv', rv, 'doc', ARGV[2], 'idx', idx, 'hist', remember(cur[5], rv))
  if cur[4] then redis.call('HDEL', KEYS[1], 'pend') end
else
  redis.call('HSET', KEYS[1], 'rv', rv, 'doc', ARGV[2], 'idx', idx, 'pend', rv)
end
if cur[3] then
  redis.call('HDEL', KEYS[1], 'tomb')
  redis.call('PERSIST', KEYS[1])
end
return 1
