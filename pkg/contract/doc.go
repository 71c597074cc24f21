// Package contract is what crosses between gitops-addon's hub manager and its spoke
// agent, in one place so that both sides agree and a change shows on both:
//
//   - names: the objects the hub renders onto every spoke and the agent acts on
//     (names.go);
//   - settings: the per-cluster choices a GitOpsCluster hands, through its cluster's
//     ManagedClusterAddOn, to the addon's rendering and to the Argo CD Agent certificate
//     signer (settings.go, encoded and decoded only here);
//   - conditions: what the spoke agent reports back on its ManagedClusterAddOn, and the
//     Route API facts the hub decides what to ship by (conditions.go);
//   - appresources: the summary of a pulled Application's resources that the spoke agent
//     writes and the hub reads back through OCM's status feedback.
package contract
