// Package mapper holds the netns tests of the mapper together with the
// ports: real gm_mapper daemons on every host, real ports and gm_allsize
// moving verified messages on the maps the mappers make while the network
// changes under them. (The mapper's own tests are in package mapper, in
// virtual time, and in cmd/gm_mapper, with real daemons.)
package mapper
