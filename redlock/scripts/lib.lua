-- Shared by every script. A plain lock is a string holding the token. A
-- reentrant lock is a hash: field "owner" names the owner and one field
-- "hold:<token>" exists per hold.

-- held reports whether this token (and owner, for a reentrant lock) holds lock.
local function held(lock, token, owner)
  local kind = redis.call('TYPE', lock).ok
  if owner == '' then
    return kind == 'string' and redis.call('GET', lock) == token
  end
  return kind == 'hash' and redis.call('HGET', lock, 'owner') == owner
    and redis.call('HEXISTS', lock, 'hold:' .. token) == 1
end

-- counter returns the key's fencing counter, or the node's floor if the
-- counter was dropped.
local function counter(ckey, floor)
  local c = redis.call('GET', ckey)
  if c then return tonumber(c) end
  return tonumber(redis.call('GET', floor) or 0)
end
