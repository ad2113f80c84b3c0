// Package demo registers every example app on one host: the counter, the
// chat rooms, the bank and the R2 images app, as `cellb serve` runs them. A host
// that serves them all sets Config.R2 to R2Bindings() and calls Register
// from Config.Classes.
package demo

import (
	"maps"

	"github.com/cellb/cellb/core/host"
	"github.com/cellb/cellb/examples/bank"
	"github.com/cellb/cellb/examples/chatroom"
	"github.com/cellb/cellb/examples/counter"
	"github.com/cellb/cellb/examples/images"
)

// Apps are the registered example apps.
type Apps struct {
	Counter *counter.App
	Rooms   *chatroom.App
	Bank    *bank.App
	Images  *images.App
}

// bindings are the R2 bindings the apps ask their host for.
var bindings = map[string]string{images.Binding: images.BucketName}

// R2Bindings returns the R2 bindings Register needs, binding name to
// bucket name, for host.Config.R2 (a new map on each call).
func R2Bindings() map[string]string { return maps.Clone(bindings) }

// Register registers the counter, chat room and bank classes on su.Runtime
// and the routes of the four apps on su.Mux. The counter's answers name
// su.Node. It fails when a class cannot be registered or the host binds
// no bucket to images.Binding (Config.R2 lacks R2Bindings()).
func Register(su *host.Setup) (*Apps, error) {
	var a Apps
	var err error
	if a.Counter, err = counter.Register(su.Runtime, counter.Options{Node: su.Node}); err != nil {
		return nil, err
	}
	if a.Rooms, err = chatroom.Register(su.Runtime, chatroom.Options{}); err != nil {
		return nil, err
	}
	if a.Bank, err = bank.Register(su.Runtime, bank.Options{Node: su.Node}); err != nil {
		return nil, err
	}
	imgs, err := su.R2(images.Binding)
	if err != nil {
		return nil, err
	}
	a.Images = images.New(imgs)
	a.Counter.Routes(su.Mux)
	a.Rooms.Routes(su.Mux)
	a.Bank.Routes(su.Mux)
	a.Images.Routes(su.Mux)
	return &a, nil
}
