-- Versions are ordered without comparing resourceVersions, which are opaque strings: the watch stream delivers an
-- object's versions in order, and the ``hist`` field keeps the last few it delivered ('\n'-joined). A worker's
-- write-through of its own write (mode 't' may create the entry, 'u' only updates it) is taken unless the stream
-- already delivered that version (a late write-through), and marks it ``pend``ing; until the stream reaches the
-- pending version, its events are older than it and leave the cached document alone. A list (mode 'l') is the
-- state now and always applies; a watch event (mode 'w') applies unless a write-through is pending.
local HISTORY = 8
local function delivered(hist, rv)
  return string.find('\n' .. (hist or '') .. '\n', '\n' .. rv .. '\n', 1, true) ~= nil
end
local function remember(hist, rv)
  local kept = {}
  for entry in string.gmatch(hist or '', '[^\n]+') do kept[#kept + 1] = entry end
  kept[#kept + 1] = rv
  return table.concat(kept, '\n', math.max(1, #kept - HISTORY + 1))
end
