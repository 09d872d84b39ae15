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

-- raiseCounter raises the key's fencing counter ckey to fence, creating it
-- for keep ms if it is gone, and the node's floor with it: every later
-- count here for the key is above fence. It never lowers a counter.
local function raiseCounter(ckey, floor, fence, keep)
  local c = redis.call('GET', ckey)
  if not c then
    redis.call('SET', ckey, fence, 'PX', keep)
  elseif tonumber(c) < tonumber(fence) then
    redis.call('SET', ckey, fence, 'KEEPTTL')
  end
  raiseFloor(floor, fence)
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

-- fenceEpoch makes sure the node's fence data was counted by this very
-- server, and returns the epoch it counts in: a counter at or below the epoch
-- is stale. stamp is the key that names who counted, hint is the identity
-- ("<run_id> <master_replid>") the client last read from this master, or ''.
--
-- Why. Fences rest on every master keeping its counters (see fence.go). A
-- master's data can be replaced by an older copy without the master being
-- empty: a replica promoted in a failover holds what had reached it, which
-- may lack the last grants and fence raises; a restart reloads an RDB or AOF
-- file, which may be older than the last writes. Its counters for a key can
-- then be below a fence already handed out, and a later quorum that meets
-- the earlier one only there would hand out a smaller fence. Keeping the
-- node out of the quorum for a while does not help: the counters stay old.
--
-- How. The stamp holds "<run_id> <master_replid> <epoch> <uptime>", written
-- with redis.set_repl(redis.REPL_NONE): it never reaches a replica through
-- replication, nor the AOF. A copy can still travel in an RDB file (a full
-- sync, a restart), but it then names another process: run_id is new for
-- every process start, and master_replid changes when a replica is promoted
-- (also when a demoted master that kept its data is promoted again). So a
-- stamp that names this master's run_id and master_replid was written by
-- this master, on its own data, and every write since went through it. On
-- any other stamp, or none, the master starts a new epoch: its clock seed,
-- as a master that lost its data does. The floor is raised to it, and a key
-- counter at or below it is treated as absent: its next fence comes from
-- the floor. All of that takes effect before any counter is read.
--
-- Proof that fences keep growing across such a replacement. Say fence f was
-- handed out for a key before master m's data was replaced, and m then grants
-- the key in a quorum Q. Before m's counter counts, the first script on the
-- new data finds a stamp that does not name it and starts epoch E, the clock
-- seed at that moment. Every fence handed out before then, f included, was
-- counted on some master from a clock seed plus fewer than 1024 per
-- millisecond, so it is below E as long as m's clock is not behind that
-- master's by more than the time between the two. After the reseed m's floor
-- is >= E and its counters for the key are > E: INCR of a counter > E, or
-- the floor's next value. So m reports more than f, and Q's fence, the
-- largest of Q's counters, is > f. Masters whose data was not replaced are
-- covered by the argument in fence.go. A reseed only ever makes fences
-- jump, so one done where none was needed (a replication ID changed after a
-- replica was gone an hour, say) is harmless.
--
-- Cost. The stamp is one GET, compared with the client's hint. Only when
-- the two differ (a new connection, a new master, no hint) does the script
-- read INFO itself. If INFO is denied to the client's user, the script
-- cannot tell and returns epoch 0: nothing is stale. The client does not
-- let such a master vote unless told to trust it.
local function fenceEpoch(stamp, floor, hint)
  local s = redis.call('GET', stamp)
  local id, epoch
  if s then id, epoch = string.match(s, '^(%S+ %S+) (%d+)') end
  if id and id == hint then return tonumber(epoch) end
  local server = redis.pcall('INFO', 'server')
  local repl = redis.pcall('INFO', 'replication')
  if type(server) ~= 'string' or type(repl) ~= 'string' then return 0 end
  local run = string.match(server, 'run_id:(%x+)')
  local up = string.match(server, 'uptime_in_seconds:(%d+)')
  local replid = string.match(repl, 'master_replid:(%x+)')
  if not run or not up or not replid or string.match(repl, 'role:(%a+)') ~= 'master' then
    return 0
  end
  local self = run .. ' ' .. replid
  if id == self then return tonumber(epoch) end
  local e = clockSeed()
  raiseFloor(floor, e)
  redis.set_repl(redis.REPL_NONE)
  redis.call('SET', stamp, self .. ' ' .. int(e) .. ' ' .. up)
  redis.set_repl(redis.REPL_ALL)
  return e
end

-- proposed returns the count c, or the client's proposal p when p is larger,
-- as long as p is not above this master's clock seed: the clock caps it.
--
-- Why. Each master counts on its own, so the masters of a quorum can name
-- different counters for one grant, and the client must then raise the
-- lagging ones to the fence it chose (fence.lua): an extra script run per
-- lagging master. Every client proposes, for each attempt, one number from
-- its clock (the same to every master); a master whose count is below the
-- proposal takes the proposal. Masters whose counters agreed before still
-- agree, and masters that drifted apart meet again at the proposal.
--
-- Safety. A master's next count only has to be above every count it made
-- before for the key (see fence.go): a proposal is taken only when it is
-- larger, so that still holds. The cap keeps the clock seed's promise (see
-- clockSeed and fenceEpoch): no count is above the clock seed of the master
-- that made it, at the time it made it, so a master that lost its data
-- still starts above every fence handed out before. A proposal that is not
-- a number, or not above c, changes nothing.
local function proposed(c, p)
  p = tonumber(p)
  if not p or p <= c then return c end
  local seed = clockSeed()
  if p > seed then p = seed end
  if p > c then return p end
  return c
end

-- bump counts a grant: the key's counter moves on. A counter that did not
-- exist (new, or dropped after its retention), or one left from before the
-- epoch, takes the floor's next value, one above everything this node ever
-- counted, and lives for keep ms. Either way the count takes the client's
-- proposal p where it is larger (see proposed).
local function bump(ckey, floor, keep, epoch, p)
  local c = redis.call('INCR', ckey)
  if c ~= 1 and c > epoch + 1 then
    local q = proposed(c, p)
    if q > c then
      c = q
      redis.call('SET', ckey, int(c), 'KEEPTTL')
    end
    raiseFloor(floor, c)
    return c
  end
  c = tonumber(redis.call('ZINCRBY', floor, 1, 'floor'))
  local fresh = c == 1 -- no floor before this
  if fresh then c = clockSeed() + 1 end
  local q = proposed(c, p)
  if fresh or q > c then
    c = q
    raiseFloor(floor, c)
  end
  redis.call('SET', ckey, int(c), 'PX', keep)
  return c
end

-- counter returns the key's fencing counter, or the node's floor if the
-- counter was dropped or is from before the epoch.
local function counter(ckey, floor, epoch)
  local c = tonumber(redis.call('GET', ckey))
  if c and c > epoch then return c end
  return floorOf(floor)
end
