-- Releases every key of a set this token holds, or rolls back a failed
-- attempt (see acquireall.lua and release.lua, whose contract this follows).
-- KEYS[1] .. KEYS[n] the locks, KEYS[n+1] the token's tombstone,
-- KEYS[n+2] the node's fence floor,
-- KEYS[n+3] .. KEYS[2n+2] the locks' waiting queues,
-- KEYS[2n+3] .. KEYS[3n+2] their leases
-- ARGV[1] token, ARGV[2] '' or how long the token's tombstone lasts, in ms,
-- ARGV[3] '1' to announce with SPUBLISH, ARGV[4] '' or a fence to raise the
-- node's floor to first, where the token holds a key here,
-- ARGV[5] '1' on a roll-back: announce only where a waiter heads a queue,
-- ARGV[6] .. ARGV[n+5] the locks' channels.
-- Each key the token holds is deleted and its release announced on its
-- channel, naming the head of its queue, or '' when nobody queues.
-- Returns 1 when the token held keys here and they were freed, 3 when they
-- were freed but an announcement failed, 0 when it held none.
local n = (#KEYS - 2) / 3
local token, tomb, sharded, fence, rollback = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]
if tomb ~= '' then redis.call('SET', KEYS[n + 1], 1, 'PX', tomb) end
local mine = {}
for i = 1, n do
  if redis.pcall('GET', KEYS[i]) == token then mine[#mine + 1] = i end
end
if #mine == 0 then return 0 end
local L = lib()
if fence ~= '' then L.raiseFloorTo(KEYS[n + 2], fence) end
local out = 1
for _, i in ipairs(mine) do
  redis.call('DEL', KEYS[i])
  local queue = KEYS[n + 2 + i]
  local head = redis.call('ZRANGE', queue, 0, 0)[1]
  if head then head = L.queueHead(queue, KEYS[2 * n + 2 + i]) end
  if (head or rollback ~= '1') and not L.announce(ARGV[5 + i], sharded, head or '') then out = 3 end
end
return out
