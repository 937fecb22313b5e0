-- The cache's index entries (cache/model.py, ``indexes``): "name" a SET, "h:name\tvalue" a HASH, "z:name\tscore" a
-- ZSET, each under the index prefix the caller passes; ``member`` is the object's id.
local function split(entry)
  local kind, rest = string.sub(entry, 1, 2), entry
  if kind == 'h:' or kind == 'z:' then rest = string.sub(entry, 3) else kind = '' end
  local tab = string.find(rest, '\t', 1, true)
  if tab then return kind, string.sub(rest, 1, tab - 1), string.sub(rest, tab + 1) end
  return kind, rest, nil
end
local function index(prefix, entry, member)
  local kind, name, value = split(entry)
  if kind == 'h:' then redis.call('HSET', prefix .. name, member, value)
  elseif kind == 'z:' then redis.call('ZADD', prefix .. name, tonumber(value), member)
  else redis.call('SADD', prefix .. name, member) end
end
local function unindex(prefix, entry, member)
  local kind, name = split(entry)
  if kind == 'h:' then redis.call('HDEL', prefix .. name, member)
  elseif kind == 'z:' then redis.call('ZREM', prefix .. name, member)
  else redis.call('SREM', prefix .. name, member) end
end
