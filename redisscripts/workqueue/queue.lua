-- The work queue's library: the clock, the pending marks, and the ADD, HOLD and PUSH steps, for every queue script
-- and for the scripts of other packages that compose them (engine/observe.lua, engine/wake.lua).
-- A pending mark is "<msg-id>|<ms>|<class>|<state>": class 0 = event, 1 = resync (lower); state 1 = a message is on
-- the queue for it, 0 = the run holding the key owes the re-publish, 2 = held for a window: the delaying queue
-- publishes it when the window ends, and adds meanwhile coalesce into it.

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

-- Record that the key needs a run (the ADD transition). ``state``: {pending mark or false, active token or false} when
-- the caller has read them already (nil: read both here in one MGET; the keys share the key's hash slot). ``now``:
-- the caller's clock (ms). ``release``: the delaying queue adding a key whose window ended, which publishes a mark
-- held for it (state 2) instead of coalescing into it.
local function workqueue_add(pending, active_key, msg_id, cls, pending_ttl, stale_ms, now, state, release)
  state = state or redis.call('MGET', pending, active_key)
  local cur, active = state[1], state[2] ~= false
  if cur then
    local id, ts, pcls, q = parse(cur)
    if active then
      if release and q == '2' then  -- the window ended during a run: that run's DONE publishes the held run
        redis.call('SET', pending, mark(id, ts, math.min(cls, pcls), '0'), 'KEEPTTL')
        return {1}
      end
      if cls < pcls then  -- remember the higher class so the holder's re-publish uses it
        redis.call('SET', pending, mark(id, ts, cls, q), 'KEEPTTL')
      end
      return {0}
    end
    if q == '2' and not release and now - ts <= tonumber(stale_ms) then
      return {0}  -- held for its window: this add joins the run at the window's end
    end
    if q == '1' and cls >= pcls and now - ts <= tonumber(stale_ms) then
      return {0}
    end
    -- otherwise re-arm: the holder died owing a run (q=0), the queued message looks lost (stale), a held window
    -- ended, or this event outranks the queued resync message (a priority inversion: docs/behaviour.md#work queue)
  end
  if active then
    redis.call('SET', pending, mark(msg_id, now, cls, '0'), 'EX', pending_ttl)
    return {1}
  end
  redis.call('SET', pending, mark(msg_id, now, cls, '1'), 'EX', pending_ttl)
  return {2, msg_id, cls}
end

-- Hold the key for a window (the HOLD transition): mark it pending in state 2 unless a mark is there already (a
-- queued or owed run covers the window's adds too). -> true when this call holds it
local function workqueue_hold(pending, msg_id, now, pending_ttl)
  return redis.call('SET', pending, mark(msg_id, now, 0, '2'), 'NX', 'EX', pending_ttl) ~= false
end

-- Publish what ADD decided, when the caller handed the message (workers/messages.py): LPUSH it onto its queue list
-- in this same atomic step, so a key is never marked queued without its message. The reply says it is pushed.
local function workqueue_push(reply, queue_list, message)
  if reply[1] == 2 and queue_list and message then
    redis.call('LPUSH', queue_list, message)
    reply[4] = 1
  end
  return reply
end

