-- Reads the state of one lock, changing nothing.
-- KEYS[1] lock, KEYS[2] its fence record, KEYS[3] the node's fence floor
-- ARGV[1], when given, a token to look for, ARGV[2] its owner ('' for a plain lock)
-- Returns {holder, holds, PTTL, counter, held}: holder is the token of a
-- plain lock, "owner:<owner>" for a reentrant one, "" when free, or
-- "?<type>" for a key this library did not write; holds counts a reentrant
-- lock's holds; counter is the holder's fence record (the count of a plain
-- lock's grant, raised to its fence; a reentrant lock's fence), else the
-- node's floor: the key's next grant here counts above it; held is 1 when ARGV[1]
-- (a hold of ARGV[2], for a reentrant lock) holds the key, else 0.
local lock, ckey, floor = KEYS[1], KEYS[2], KEYS[3]
local kind = redis.call('TYPE', lock).ok
local holder, holds = '', 0
if kind == 'string' then
  holder, holds = redis.call('GET', lock), 1
elseif kind == 'hash' and redis.call('HEXISTS', lock, 'owner') == 1 then
  holder, holds = 'owner:' .. redis.call('HGET', lock, 'owner'), redis.call('HLEN', lock) - 1
elseif kind ~= 'none' then
  holder = '?' .. kind
end
local r = redis.call('MGET', ckey, floor)
local c = tonumber(r[2]) or 0
if kind == 'hash' then
  c = tonumber(r[1]) or c
elseif kind == 'string' then
  c = lib().plainRecord(r[1], holder) or c
end
local mine = 0
if ARGV[1] and ARGV[1] ~= '' and held(lock, ARGV[1], ARGV[2] or '') then mine = 1 end
return {holder, holds, redis.call('PTTL', lock), c, mine}
