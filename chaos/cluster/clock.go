package cluster

import (
	"context"
	"fmt"
	"time"

	"github.com/gomodule/redigo/redis"
)

// jumpScript moves the expiry of every key with a TTL earlier by ARGV[1]
// milliseconds, as if the master's clock had jumped forward that far. A key
// whose new expiry is in the past is deleted at once. It returns how many
// keys it moved.
const jumpScript = `
local jump = tonumber(ARGV[1])
local n = 0
for _, k in ipairs(redis.call('KEYS', '*')) do
  local at = redis.call('PEXPIRETIME', k)
  if at > 0 then
    redis.call('PEXPIREAT', k, at - jump)
    n = n + 1
  end
end
return n
`

// jumpClock runs jumpScript on the master at addr.
func jumpClock(ctx context.Context, addr string, d time.Duration) (int, error) {
	if d <= 0 {
		return 0, fmt.Errorf("cluster: clock jump %v: must be positive", d)
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	n, err := redis.Int(do(ctx, addr, "EVAL", jumpScript, 0, d.Milliseconds()))
	if err != nil {
		return 0, fmt.Errorf("cluster: clock jump on %s: %w", addr, err)
	}
	return n, nil
}
