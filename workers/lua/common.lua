-- Shared helpers, prepended to every gate script.
-- A pending mark is "<msg-id>|<ms>|<class>|<queued>": class 0 = event, 1 = resync (lower);
-- queued 1 = a message is on the queue for it, 0 = the active holder owes the re-publish.

-- Redis's clock, for the steps no client clock comes with (DONE's rare re-marks, RENEW, the reaper). ADD and START
-- take the caller's clock instead (``clock``): they run once per watch event and once per run, and a TIME is one
-- command more each time. Clocks of different hosts may differ by a little: a mark's time only decides staleness (a
-- minute) and the "waited" metric, and the reaper checks the lease key's own TTL before it re-arms a key.
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function clock(arg)
  return tonumber(arg) or now_ms()
end
local function parse(mark)
  local id, ts, cls, q = string.match(mark, '^([^|]*)|(%d+)|(%d+)|(%d)$')
  return id, tonumber(ts), tonumber(cls), q
end
local function mark(id, ts, cls, q)
  return id .. '|' .. ts .. '|' .. cls .. '|' .. q
end

-- Record that the key needs a run (the ADD transition; add.lua and observe.lua return it). ``state``: {pending mark
-- or false, active token or false} when the caller has read them already (nil: read both here in one MGET; the keys
-- share the key's hash slot). ``now``: the caller's clock (ms). This runs once per watch event, so every command
-- counts (benchmarks/README.md: Redis commands per claim).
local function gate_add(pending, active_key, msg_id, cls, pending_ttl, stale_ms, now, state)
  state = state or redis.call('MGET', pending, active_key)
  local cur, active = state[1], state[2] ~= false
  if cur then
    local id, ts, pcls, q = parse(cur)
    if active then
      if cls < pcls then  -- remember the higher class so the holder's re-publish uses it
        redis.call('SET', pending, mark(id, ts, cls, q), 'KEEPTTL')
      end
      return {0}
    end
    if q == '1' and cls >= pcls and now - ts <= tonumber(stale_ms) then
      return {0}
    end
    -- otherwise re-arm: the holder died owing a run (q=0), the queued message looks lost (stale),
    -- or this event outranks the queued resync message (a priority inversion: docs/behaviour.md#work-gate)
  end
  if active then
    redis.call('SET', pending, mark(msg_id, now, cls, '0'), 'EX', pending_ttl)
    return {1}
  end
  redis.call('SET', pending, mark(msg_id, now, cls, '1'), 'EX', pending_ttl)
  return {2, msg_id, cls}
end

-- Publish what ADD decided, when the caller handed the message (workers/messages.py): LPUSH it onto its queue list
-- in this same atomic step, so a key is never marked queued without its message. The reply says it is pushed.
local function gate_push(reply, queue_list, message)
  if reply[1] == 2 and queue_list and message then
    redis.call('LPUSH', queue_list, message)
    reply[4] = 1
  end
  return reply
end

-- Defer watch events (their write ids) to the run of the key going on: its DONE judges them. The ids go into one
-- string, space-separated, so that DONE reads them with the key's pending and active marks in one MGET; the TTL (a
-- safety bound for a run that died without DONE) is set when the string is created, not on every event.
local function defer(deferred, ids, ttl)
  local text = table.concat(ids, ' ') .. ' '
  if redis.call('APPEND', deferred, text) == #text then
    redis.call('EXPIRE', deferred, ttl)
  end
end

-- A space-separated string of write ids (own-write records, deferred events; false: none) as a list without repeats,
-- in order, and as a set.
local function ids_of(text)
  local list, set = {}, {}
  for id in string.gmatch(text or '', '%S+') do
    if not set[id] then
      set[id] = true
      table.insert(list, id)
    end
  end
  return list, set
end

-- Own-write records (workers/own_writes.py): the write ids runs of a key recorded, space-separated in one string,
-- newest last, so that OBSERVE reads them with the key's pending and active marks in one MGET. Each record keeps the
-- string for the records' TTL from now, and only its newest RECORDS_MAX_BYTES: an older id dropped costs at most one
-- extra run, should its event still come.
local RECORDS_MAX_BYTES = 4096
local function recorded(records, id)  -- one id: a plain search, no parse
  return records and string.find(' ' .. records, ' ' .. id .. ' ', 1, true) ~= nil
end
-- Record ``ids`` after ``records`` (the string read); returns the set of every id recorded, these included.
local function record(key, records, ids, ttl_ms)
  local known = select(2, ids_of(records))
  local parts = {records or ''}
  for _, id in ipairs(ids) do
    if not known[id] then
      known[id] = true
      table.insert(parts, id .. ' ')
    end
  end
  local text = table.concat(parts)
  if #text > RECORDS_MAX_BYTES then
    text = string.sub(text, string.find(text, ' ', #text - RECORDS_MAX_BYTES, true) + 1)
  end
  redis.call('SET', key, text, 'PX', ttl_ms)
  return known
end
