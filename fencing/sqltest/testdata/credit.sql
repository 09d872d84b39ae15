-- credit.sql, run as:
--   redlock run --key ledger:1 -- psql -X -q -At -d "$DATABASE_URL" -f credit.sql
\set ON_ERROR_STOP on
\getenv fence REDLOCK_FENCE
BEGIN;
SELECT quorumlock_fences_check('ledger:1', :fence); -- first: stops here if a newer holder has written
UPDATE ledger SET balance = balance + 100, fence = :fence WHERE id = 1;
COMMIT;
