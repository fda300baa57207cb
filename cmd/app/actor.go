package app

import "github.com/solarops/solar/internal/actor"

// Actor is who runs the command (internal/actor: $SOLAR_ACTOR, else
// user@host): what the records it writes carry as staged_by,
// processed_by, ran_by or trusted_by.
func (a *App) Actor() string { return actor.Of(a.Getenv) }

// ActorOrDash shows a recorded actor in a human view: "-" for a record
// written before actors ("" in JSON views).
func ActorOrDash(who string) string {
	if who == "" {
		return "-"
	}
	return who
}
