package fencing

import (
	"context"
	"fmt"
)

// StaleSQLState is the SQLSTATE of the error the SQL function raises for a
// stale fence. Invalid arguments raise 22023 (invalid_parameter_value).
const StaleSQLState = "QF001"

// Function returns the name of the guard's SQL function: the table's name
// followed by _check (quorumlock_fences_check by default). Only PostgreSQL
// has it; see FunctionDDL.
func (g *Guard) Function() string { return g.table + "_check" }

// FunctionDDL returns the PostgreSQL statement that creates (or replaces)
// the guard's SQL function, the same check as Check for scripts:
//
//	SELECT quorumlock_fences_check('ledger', 1838337922308190);
//
// records the fence for the resource in the calling transaction and returns
// it, or raises an error with SQLSTATE StaleSQLState naming both fences,
// which aborts the transaction. An empty resource or a fence below 1 raises
// 22023. The same rules as Check's apply: call it first in the
// transaction, commit only if it returned. In psql, with ON_ERROR_STOP set,
// the refusal ends the script with exit status 3 before COMMIT.
//
// Other dialects have no function: their scripts run Check's statements
// themselves (see DDL and the package documentation).
func (g *Guard) FunctionDDL() (string, error) {
	if g.dialect != PostgreSQL {
		return "", invalid("the SQL function is PostgreSQL's; %v has none", g.dialect)
	}
	return fmt.Sprintf(`CREATE OR REPLACE FUNCTION %[1]s(p_resource text, p_fence bigint) RETURNS bigint
LANGUAGE plpgsql AS $fn$
DECLARE
	highest bigint;
BEGIN
	IF p_resource IS NULL OR p_resource = '' THEN
		RAISE EXCEPTION 'fencing: invalid argument: empty resource name' USING ERRCODE = '22023';
	END IF;
	IF p_fence IS NULL OR p_fence <= 0 THEN
		RAISE EXCEPTION 'fencing: invalid argument: fence %% for resource "%%": fences are positive',
			coalesce(p_fence::text, 'NULL'), p_resource USING ERRCODE = '22023';
	END IF;
	INSERT INTO %[2]s AS f (resource, fence) VALUES (p_resource, p_fence)
		ON CONFLICT (resource) DO UPDATE SET fence = EXCLUDED.fence WHERE f.fence <= EXCLUDED.fence;
	IF FOUND THEN
		RETURN p_fence;
	END IF;
	SELECT f.fence INTO highest FROM %[2]s AS f WHERE f.resource = p_resource;
	RAISE EXCEPTION 'fencing: stale fence: resource "%%": fence %% is older than %%, already recorded', p_resource, p_fence, highest
		USING ERRCODE = '%[3]s';
END
$fn$`, g.Function(), g.table, StaleSQLState), nil
}

// InstallFunction creates the table if it does not exist, and creates or
// replaces the SQL function of FunctionDDL (PostgreSQL only).
func (g *Guard) InstallFunction(ctx context.Context, db Execer) error {
	ddl, err := g.FunctionDDL()
	if err != nil {
		return err
	}
	if err := g.CreateTable(ctx, db); err != nil {
		return err
	}
	if _, err := db.ExecContext(ctx, ddl); err != nil {
		return fmt.Errorf("fencing: creating function %s: %w", g.Function(), err)
	}
	return nil
}
