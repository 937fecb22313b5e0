-- The own writes' library (engine/own_writes.py), for the scripts that record or judge write ids: observe, wake,
-- note, settle.

-- Defer watch events (their write ids) to the run of the key going on: its DONE judges them. The ids go into one
-- string, space-separated, so that DONE reads them with the key's pending and active marks in one MGET; the TTL (a
-- safety bound for a run that died without DONE) is set when the string is created, not on every event.
local function defer(deferred, ids, ttl)
  local text = table.concat(ids, ' ') .. ' '
  if redis.call('APPEND', deferred, text) == #text then
    redis.call('EXPIRE', deferred, ttl)
  end
end

-- A held or deferred event that names no write (a deletion, an object being deleted): never anybody's own write, so
-- whoever judges it runs the key again.
local UNKNOWN_WRITE = '-'

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

-- Own-write records (engine/own_writes.py): the write ids runs of a key recorded, space-separated in one string,
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
