-- Shared by the semaphore's scripts (permit*.lua), after lib.lua. A
-- semaphore's key is a sorted set: one member per permit, its token, scored
-- by when the permit ends, in ms of the master's clock (lib's clock; never
-- the client's). Beside it, its permit record holds K, the number of
-- permits every caller of the key must agree on; both keys expire when the
-- last permit would.

-- livePermit reports whether token holds a permit of sem that has not ended
-- by now. A key of another type holds none: pcall turns WRONGTYPE into a
-- table.
local function livePermit(sem, token, now)
  local ends = redis.pcall('ZSCORE', sem, token)
  return type(ends) == 'string' and tonumber(ends) > now
end

-- keepPermits sets the TTL of sem and its record rec to the end of the last
-- permit, and frees both when no permit is left.
local function keepPermits(sem, rec, now)
  local last = redis.call('ZRANGE', sem, -1, -1, 'WITHSCORES')[2]
  if not last then
    redis.call('DEL', rec)
    return
  end
  local left = math.max(1, tonumber(last) - now)
  redis.call('PEXPIRE', sem, left)
  redis.call('PEXPIRE', rec, left)
end
