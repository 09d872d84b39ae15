-- Shared by every script. A plain lock is a string holding the token. A
-- reentrant lock is a hash: field "owner" names the owner and one field
-- "hold:<token>" exists per hold. Numbers written back go through int():
-- Lua would print a large one as 1.8e+15.

-- held reports whether this token (and owner, for a reentrant lock) holds lock.
local function held(lock, token, owner)
  local kind = redis.call('TYPE', lock).ok
  if owner == '' then
    return kind == 'string' and redis.call('GET', lock) == token
  end
  return kind == 'hash' and redis.call('HGET', lock, 'owner') == owner
    and redis.call('HEXISTS', lock, 'hold:' .. token) == 1
end

local function int(n)
  return string.format('%d', n)
end

-- floorOf returns the node's fence floor: at least every fence it ever
-- counted. A node without one is new or lost its data; it starts from its
-- clock, in milliseconds times 1024, which is above anything it can have
-- counted before, as long as it hands out fewer than 1024 per millisecond and
-- its clock agrees with the other masters' within the restart guard window.
local function floorOf(floor)
  local f = redis.call('GET', floor)
  if f then return tonumber(f) end
  local t = redis.call('TIME')
  return (tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)) * 1024
end

-- counter returns the key's fencing counter, or the node's floor if the
-- counter was dropped.
local function counter(ckey, floor)
  local c = redis.call('GET', ckey)
  if c then return tonumber(c) end
  return floorOf(floor)
end
