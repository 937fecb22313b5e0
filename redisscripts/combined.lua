-- The runner of a combined script (redisscripts/combined.py), after the table ``parts`` of its parts' functions.
-- ARGV count, then per call: its part, its number of keys, its number of arguments, its arguments; KEYS every call's
-- keys in turn. -> per call {1, reply} | {0, error}
local out, at, key_at = {}, 2, 1
for i = 1, tonumber(ARGV[1]) do
  local part, nkeys, nargs = tonumber(ARGV[at]), tonumber(ARGV[at + 1]), tonumber(ARGV[at + 2])
  at = at + 3
  local keys, args = {}, {}
  for j = 1, nkeys do keys[j] = KEYS[key_at + j - 1] end
  for j = 1, nargs do args[j] = ARGV[at + j - 1] end
  key_at, at = key_at + nkeys, at + nargs
  local ok, reply = pcall(parts[part], keys, args)
  if ok then
    out[i] = {1, reply}
  else
    out[i] = {0, type(reply) == 'table' and reply.err or tostring(reply)}
  end
end
return out
