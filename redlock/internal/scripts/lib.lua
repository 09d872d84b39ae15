-- Shared by every script. A plain lock is a string holding the token. A
-- reentrant lock is a hash: field "owner" names the owner and one field
-- "hold:<token>" exists per hold. Fences are whole numbers near 2^50; they
-- are written back as string.format('%d', n) (int below), so that none
-- depends on how Lua would print a number (its tostring gives 1.8e+15).
--
-- A master makes a script's functions anew on every run of the script, and
-- on the lock's busiest scripts that cost more than the lock's own work. So
-- only held and lib are made on every run; the other functions are made by
-- lib() when a script's path needs them (local L = lib(), then
-- L.fenceEpoch and so on), and acquire.lua and release.lua call it only
-- off their common path.

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

-- lib makes the functions of the fence floor, the clock seed and the fence
-- epoch, and returns them.
local function lib()
  local function int(n)
    return string.format('%d', n)
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

  -- The node's fence floor is a string key holding a whole number: at least
  -- every fence the node ever counted. Scripts read it with the other keys
  -- they need in one MGET, which gives nil for a key that is missing or of
  -- another type; callers pass what they read as f, a number or nil.
  --
  -- raiseFloor raises the floor to c, and returns the floor's value after. A
  -- floor that is missing or unreadable (a sorted set, as earlier versions of
  -- the library kept it) is set to c or the clock seed, whichever is larger:
  -- the seed is above everything the node counted before (see clockSeed), so
  -- the floor keeps its promise whatever it held.
  local function raiseFloor(floor, c, f)
    if f and f >= c then return f end
    if not f then c = math.max(c, clockSeed()) end
    redis.call('SET', floor, int(c))
    return c
  end

  -- raiseFloorTo raises the floor to fence, for a grant that keeps no
  -- record of its own (a permit, a read hold, a set): so that every later
  -- count here is above it.
  local function raiseFloorTo(floor, fence)
    raiseFloor(floor, tonumber(fence), tonumber(redis.call('MGET', floor)[1]))
  end

  -- plainRecord returns the count a plain lock's record v ("<count>
  -- <token>", or nil) holds when it names token, else nil: a record left by
  -- another grant of the key, or none, says nothing of token's.
  local function plainRecord(v, token)
    if not v then return nil end
    local n, t = string.match(v, '^(%d+) (.*)$')
    if t ~= token then return nil end
    return tonumber(n)
  end

  -- raiseCounter raises the node's floor to fence, so that every later count
  -- here is above it, and the key's record ckey: for a reentrant lock (owner
  -- not ''), creating it for keep ms if it is gone, so that its later holds
  -- report at least fence; for a plain lock, only a record of token's own
  -- grant. It never lowers either.
  local function raiseCounter(ckey, floor, fence, keep, owner, token)
    fence = tonumber(fence)
    local r = redis.call('MGET', ckey, floor)
    if owner == '' then
      local c = plainRecord(r[1], token)
      if c and c < fence then redis.call('SET', ckey, int(fence) .. ' ' .. token, 'KEEPTTL') end
    else
      local c = tonumber(r[1])
      if not r[1] then
        redis.call('SET', ckey, int(fence), 'PX', keep)
      elseif not c or c < fence then
        redis.call('SET', ckey, int(fence), 'KEEPTTL')
      end
    end
    raiseFloor(floor, fence, tonumber(r[2]))
  end

  -- fenceEpoch makes sure the node's fence data was counted by this very
  -- server, and returns the epoch it counts in: a counter at or below the epoch
  -- is stale. stamp is the key that names who counted, knownID is the identity
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
  -- Cost. The caller reads the stamp (s, false when there is none) and the
  -- floor (f, see raiseFloor) with the other keys it needs, in one MGET, and
  -- first compares the stamp with knownID, the identity the client knows, itself (acquire.lua):
  -- when the stamp is knownID followed by exactly two numbers, knownID
  -- is the stamp's identity, and the epoch is the first number, with no
  -- function made or called. fenceEpoch is the rest: it parses the stamp in
  -- full, and only when the stamp names another server or none (a new
  -- connection, a new master, no known identity) does it read INFO. If INFO is denied
  -- to the client's user, the script cannot tell and returns epoch 0:
  -- nothing is stale. The client does not let such a master vote unless
  -- told to trust it.
  --
  -- It returns the epoch and the floor's value after (f, or the epoch where a
  -- new epoch raised it).
  local function fenceEpoch(stamp, floor, knownID, s, f)
    local id, epoch
    if s then id, epoch = string.match(s, '^(%S+ %S+) (%d+)') end
    if id and id == knownID then return tonumber(epoch), f end
    local server = redis.pcall('INFO', 'server')
    local repl = redis.pcall('INFO', 'replication')
    if type(server) ~= 'string' or type(repl) ~= 'string' then return 0, f end
    local run = string.match(server, 'run_id:(%x+)')
    local up = string.match(server, 'uptime_in_seconds:(%d+)')
    local replid = string.match(repl, 'master_replid:(%x+)')
    if not run or not up or not replid or string.match(repl, 'role:(%a+)') ~= 'master' then
      return 0, f
    end
    local self = run .. ' ' .. replid
    if id == self then return tonumber(epoch), f end
    local e = clockSeed()
    f = raiseFloor(floor, e, f)
    redis.set_repl(redis.REPL_NONE)
    redis.call('SET', stamp, self .. ' ' .. int(e) .. ' ' .. up)
    redis.set_repl(redis.REPL_ALL)
    return e, f
  end

  -- The waiting queue of a key (see acquire.lua): queue holds the waiters'
  -- ids scored by their tickets, leases when each one's place ends, in ms of
  -- the master's clock. A waiter that stops renewing its lease (it died, or
  -- it is cut off in a minority) drops out of the queue once it ends.
  local function clock()
    local t = redis.call('TIME')
    return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  end

  -- queueHead drops the waiters at the front of queue whose lease has ended
  -- (or who have none), and returns the first one left, or false.
  local function queueHead(queue, leases)
    local now = clock()
    while true do
      local head = redis.call('ZRANGE', queue, 0, 0)[1]
      if not head then return false end
      local ends = tonumber(redis.call('ZSCORE', leases, head))
      if ends and ends > now then return head end
      redis.call('ZREM', queue, head)
      redis.call('ZREM', leases, head)
    end
  end

  -- enqueue puts waiter in queue at its ticket, where it stays if it is
  -- there, and renews its lease to lease ms from now. Both keys live at
  -- least as long as the longest lease in them, so a queue nobody renews
  -- expires whole.
  local function enqueue(queue, leases, waiter, ticket, lease)
    redis.call('ZADD', queue, ticket, waiter)
    redis.call('ZADD', leases, clock() + lease, waiter)
    for _, k in ipairs({queue, leases}) do
      if redis.call('PTTL', k) < lease then redis.call('PEXPIRE', k, lease) end
    end
  end

  -- announce publishes message on channel, with SPUBLISH when sharded is
  -- '1'. It reports false when the master refused the announcement.
  local function announce(channel, sharded, message)
    local publish = 'PUBLISH'
    if sharded == '1' then publish = 'SPUBLISH' end
    local ok = redis.pcall(publish, channel, message)
    return not (type(ok) == 'table' and ok.err)
  end

  -- counter returns the count of a grant made here before: a reentrant lock's
  -- record c (as read) while it is from this epoch, else the node's floor f,
  -- which is at least that count, or the clock seed if the node has no floor.
  local function counter(c, f, epoch)
    c = tonumber(c)
    if c and c > epoch then return c end
    if f and f > epoch then return f end
    return math.max(epoch, clockSeed())
  end

  -- countGrant counts a new grant of a key that keeps no fence record of
  -- its own, as acquire.lua counts a plain lock's: one above the floor (at
  -- least the epoch: see fenceEpoch), or the proposal where larger, capped
  -- at the clock seed; the floor follows. s and f are the stamp and the
  -- floor as read. It returns the count.
  local function countGrant(stamp, floor, knownID, s, f, propose)
    local epoch
    epoch, f = fenceEpoch(stamp, floor, knownID, s, f)
    local c = counter(nil, f, epoch) + 1
    local p = tonumber(propose)
    if p and p > c then c = math.max(c, math.min(p, clockSeed())) end
    raiseFloor(floor, c, f)
    return c
  end

  return {clockSeed = clockSeed, raiseFloor = raiseFloor, raiseCounter = raiseCounter, raiseFloorTo = raiseFloorTo, plainRecord = plainRecord,
    fenceEpoch = fenceEpoch, counter = counter, queueHead = queueHead, enqueue = enqueue,
    announce = announce, clock = clock, countGrant = countGrant}
end
