package agent

import (
	"context"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// rotatorManager is the manager the certificate rotator is given. The
// rotator writes the CA bundle into each webhook configuration on every one
// of its reconciles, whether it changed or not, so every start of the agent
// cost a PUT per configuration (two, sometimes four) for nothing. Its client
// leaves out such updates.
type rotatorManager struct {
	manager.Manager
}

// GetClient is the manager's client, without updates that change nothing.
func (m rotatorManager) GetClient() client.Client {
	return unchangedUpdatesSkipped{Client: m.Manager.GetClient(), live: m.GetAPIReader()}
}

// unchangedUpdatesSkipped drops an Update of an unstructured object (the
// rotator's webhook configurations) that the API server holds already, at the
// same resourceVersion and with the same content; other updates pass.
type unchangedUpdatesSkipped struct {
	client.Client
	live client.Reader
}

// Update writes obj unless it is what the API server has.
func (c unchangedUpdatesSkipped) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		now := &unstructured.Unstructured{}
		now.SetGroupVersionKind(u.GroupVersionKind())
		if err := c.live.Get(ctx, client.ObjectKeyFromObject(u), now); err == nil &&
			now.GetResourceVersion() == u.GetResourceVersion() && equality.Semantic.DeepEqual(now.Object, u.Object) {
			return nil
		}
	}
	return c.Client.Update(ctx, obj, opts...)
}
