-- Shared by every script. A plain lock is a string holding the token. A
-- reentrant lock is a hash: field "owner" names the owner and one field
-- "hold:<token>" exists per hold. Fences are whole numbers near 2^50; they
-- are written back through int(), so that none depends on how Lua would
-- print a number (its tostring gives 1.8e+15).

-- held reports whether this token (and owner, for a reentrant lock) holds
-- lock. A key of another type is not held: pcall turns WRONGTYPE into a
-- table, which equals no string.
local function held(lock, token, owner)
  if owner == '' then
    return redis.pcall('GET', lock) == token
  end
  return redis.pcall('HGET', lock, 'owner') == owner
    and redis.call('HEXISTS', lock, 'hold:' .. token) == 1
end

local function int(n)
  return string.format('%d', n)
end

-- The node's fence floor is the one member of a sorted set: at least every
-- fence the node ever counted. It is raised by comparing in Lua rather than
-- with ZADD GT, which Redis 6.0 lacks.
local function raiseFloor(floor, c)
  c = tonumber(c)
  local f = redis.call('ZSCORE', floor, 'floor')
  if not f or tonumber(f) < c then
    redis.call('ZADD', floor, int(c), 'floor')
  end
end

-- clockSeed is where a node with no floor starts: its clock, in milliseconds
-- times 1024. A node without a floor is new or lost its data; the seed is
-- above anything it can have counted before, as long as it hands out fewer
-- than 1024 fences per millisecond and its clock agrees with the other
-- masters' within the restart guard window.
local function clockSeed()
  local t = redis.call('TIME')
  return (tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)) * 1024
end

-- floorOf returns the node's fence floor, or the clock seed if it has none.
local function floorOf(floor)
  local f = redis.call('ZSCORE', floor, 'floor')
  if f then return tonumber(f) end
  return clockSeed()
end

-- bump counts a grant: the key's counter moves on. A counter that did not
-- exist (new, or dropped after its retention) takes the floor's next value,
-- one above everything this node ever counted, and lives for keep ms.
local function bump(ckey, floor, keep)
  local c = redis.call('INCR', ckey)
  if c ~= 1 then
    raiseFloor(floor, c)
    return c
  end
  c = tonumber(redis.call('ZINCRBY', floor, 1, 'floor'))
  if c == 1 then -- no floor before this
    c = clockSeed() + 1
    raiseFloor(floor, c)
  end
  redis.call('SET', ckey, int(c), 'PX', keep)
  return c
end

-- counter returns the key's fencing counter, or the node's floor if the
-- counter was dropped.
local function counter(ckey, floor)
  local c = redis.call('GET', ckey)
  if c then return tonumber(c) end
  return floorOf(floor)
end
