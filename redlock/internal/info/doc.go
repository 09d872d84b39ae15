// Package info reads what the restart guard asks a Redis master: the
// replies to INFO server, INFO replication, INFO memory, CONFIG GET
// append* and GET of the fence stamp, as the driver hands them over.
//
// It is pure: it does no I/O and reads no clock; a caller that needs a
// moment passes it in. Whatever the replies hold, it returns a result and
// never panics: a reply it cannot use makes the read unreadable, with the
// reason in Fields.Unreadable.
package info
