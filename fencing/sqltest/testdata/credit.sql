-- Credit account 1 with 100, under the lock `redlock run` holds:
--   redlock run --key ledger:1 -- psql -X -q -At -d "$DATABASE_URL" -f credit.sql
-- redlock run exports REDLOCK_FENCE; psql 15 reads it with \getenv.
\set ON_ERROR_STOP on
\getenv fence REDLOCK_FENCE
BEGIN;
-- First in the transaction: record the fence, or stop here if a newer
-- holder has written (SQLSTATE QF001; psql exits with status 3).
SELECT quorumlock_fences_check('ledger:1', :fence);
UPDATE ledger SET balance = balance + 100, fence = :fence WHERE id = 1;
COMMIT;
