package driver

// Authorizer decides whether SQLite may prepare an action. The codes and
// arguments are SQLite's own (sqlite3_set_authorizer): action is one of the
// Action constants; arg1 and arg2 depend on it (for ActionRead a table and a
// column, for ActionPragma the pragma name and its argument); database is
// "main", "temp" or an attached name; trigger is the innermost trigger or
// view the access comes from, if any.
type Authorizer func(action Action, arg1, arg2, database, trigger string) AuthResult

// AuthResult is an authorizer's answer.
type AuthResult int

const (
	AuthOK     AuthResult = 0 // SQLITE_OK
	AuthDeny   AuthResult = 1 // SQLITE_DENY: the statement fails to prepare
	AuthIgnore AuthResult = 2 // SQLITE_IGNORE: reads NULL / skips the action
)

// Action is a SQLite authorizer action code.
type Action int

// SQLite's authorizer action codes.
const (
	ActionCreateIndex       Action = 1
	ActionCreateTable       Action = 2
	ActionCreateTempIndex   Action = 3
	ActionCreateTempTable   Action = 4
	ActionCreateTempTrigger Action = 5
	ActionCreateTempView    Action = 6
	ActionCreateTrigger     Action = 7
	ActionCreateView        Action = 8
	ActionDelete            Action = 9
	ActionDropIndex         Action = 10
	ActionDropTable         Action = 11
	ActionDropTempIndex     Action = 12
	ActionDropTempTable     Action = 13
	ActionDropTempTrigger   Action = 14
	ActionDropTempView      Action = 15
	ActionDropTrigger       Action = 16
	ActionDropView          Action = 17
	ActionInsert            Action = 18
	ActionPragma            Action = 19
	ActionRead              Action = 20
	ActionSelect            Action = 21
	ActionTransaction       Action = 22
	ActionUpdate            Action = 23
	ActionAttach            Action = 24
	ActionDetach            Action = 25
	ActionAlterTable        Action = 26
	ActionReindex           Action = 27
	ActionAnalyze           Action = 28
	ActionCreateVTable      Action = 29
	ActionDropVTable        Action = 30
	ActionFunction          Action = 31
	ActionSavepoint         Action = 32
	ActionRecursive         Action = 33
)

var actionNames = map[Action]string{
	ActionCreateIndex: "CREATE INDEX", ActionCreateTable: "CREATE TABLE",
	ActionCreateTempIndex: "CREATE TEMP INDEX", ActionCreateTempTable: "CREATE TEMP TABLE",
	ActionCreateTempTrigger: "CREATE TEMP TRIGGER", ActionCreateTempView: "CREATE TEMP VIEW",
	ActionCreateTrigger: "CREATE TRIGGER", ActionCreateView: "CREATE VIEW",
	ActionDelete: "DELETE", ActionDropIndex: "DROP INDEX", ActionDropTable: "DROP TABLE",
	ActionDropTempIndex: "DROP TEMP INDEX", ActionDropTempTable: "DROP TEMP TABLE",
	ActionDropTempTrigger: "DROP TEMP TRIGGER", ActionDropTempView: "DROP TEMP VIEW",
	ActionDropTrigger: "DROP TRIGGER", ActionDropView: "DROP VIEW", ActionInsert: "INSERT",
	ActionPragma: "PRAGMA", ActionRead: "READ", ActionSelect: "SELECT",
	ActionTransaction: "TRANSACTION", ActionUpdate: "UPDATE", ActionAttach: "ATTACH",
	ActionDetach: "DETACH", ActionAlterTable: "ALTER TABLE", ActionReindex: "REINDEX",
	ActionAnalyze: "ANALYZE", ActionCreateVTable: "CREATE VIRTUAL TABLE",
	ActionDropVTable: "DROP VIRTUAL TABLE", ActionFunction: "FUNCTION",
	ActionSavepoint: "SAVEPOINT", ActionRecursive: "RECURSIVE",
}

func (a Action) String() string {
	if s, ok := actionNames[a]; ok {
		return s
	}
	return "action " + itoa(int(a))
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	neg := n < 0
	if neg {
		n = -n
	}
	var b [20]byte
	i := len(b)
	for n > 0 {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
	}
	if neg {
		i--
		b[i] = '-'
	}
	return string(b[i:])
}
