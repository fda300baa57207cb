// Package events holds the "solar events" commands.
package events
