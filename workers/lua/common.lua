-- Shared helpers, prepended to every gate script.
-- A pending mark is "<msg-id>|<ms>|<class>|<queued>": class 0 = event, 1 = resync (lower);
-- queued 1 = a message is on the queue for it, 0 = the active holder owes the re-publish.
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function parse(mark)
  local id, ts, cls, q = string.match(mark, '^([^|]*)|(%d+)|(%d+)|(%d)$')
  return id, tonumber(ts), tonumber(cls), q
end
local function mark(id, ts, cls, q)
  return id .. '|' .. ts .. '|' .. cls .. '|' .. q
end
