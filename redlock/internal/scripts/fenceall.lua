-- Raises the node's fence floor to the fence chosen for a set this token
-- holds (see acquireall.lua), as fence.lua does for a lock: only where the
-- token holds every key of the set, so that the next holder of any of
-- them counts past it.
-- KEYS[1] .. KEYS[n] the locks, KEYS[n+1] the node's fence floor
-- ARGV[1] token, ARGV[2] fence.
-- Returns 1 when done, 0 when the token does not hold every key here.
local n = #KEYS - 1
for i = 1, n do
  if redis.pcall('GET', KEYS[i]) ~= ARGV[1] then return 0 end
end
lib().raiseFloorTo(KEYS[n + 1], ARGV[2])
return 1
