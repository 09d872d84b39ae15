package redigo_test

import (
	"testing"

	"github.com/gomodule/redigo/redis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock/driver/redigo"
)

func TestDB_SelectionIsApplied(t *testing.T) {
	addr := startRedis(t).Addr()
	db0 := newPool(t, addr)
	db3 := newPool(t, addr, redigo.WithDB(3))

	tests := []struct {
		name string
		addr string
		opts []redigo.Option
	}{
		{"option", addr, []redigo.Option{redigo.WithDB(3)}},
		{"URL path", "redis://" + addr + "/3", nil},
		{"URL parameter", "redis://" + addr + "?db=3", nil},
		{"option overrides URL", "redis://" + addr + "/5", []redigo.Option{redigo.WithDB(3)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key := "key:" + tt.name
			p := newPool(t, tt.addr, tt.opts...)
			_, err := p.Do(testCtx(t), "SET", key, tt.name)
			require.NoError(t, err)

			info, err := redis.String(p.Do(testCtx(t), "CLIENT", "INFO"))
			require.NoError(t, err)
			assert.Contains(t, info, " db=3 ")

			n, err := redis.Int(mustDo(t, db0, "EXISTS", key), nil)
			require.NoError(t, err)
			assert.Zero(t, n, "the key landed in db 0")

			got, err := redis.String(mustDo(t, db3, "GET", key), nil)
			require.NoError(t, err, "the key is not in db 3")
			assert.Equal(t, tt.name, got)
		})
	}
}

func TestDB_ZeroSelectsNothing(t *testing.T) {
	addr := startRedis(t).Addr()
	p := newPool(t, addr, redigo.WithDB(0))
	mustDo(t, p, "SET", "k", "v")
	info, err := redis.String(mustDo(t, p, "CLIENT", "INFO"), nil)
	require.NoError(t, err)
	assert.Contains(t, info, " db=0 ")
}

func TestDB_OutOfRangeFailsTheDial(t *testing.T) {
	addr := startRedis(t, "--databases", "4").Addr()
	p := newPool(t, addr, redigo.WithDB(4))
	_, err := p.Do(testCtx(t), "PING")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "DB index is out of range")
	assert.Zero(t, redigo.Dials(p))
}
