"""The claim / handle / pool domain: providers, matching and binding, lifespans, parameters, validation, managed
resources, health, linked providers, requester identity, conditions, pools, rollout and autoscaling.

Most modules are pure functions over Kubernetes documents (and an explicit ``now``), unit-tested without a cluster.
A few also talk to the API through ``ctx.kube`` because the read or the conditional write is part of the decision
they make: :mod:`~poolboy.domain.binding` (list candidates, the bind patch), :mod:`~poolboy.domain.handle_factory`
(create a claim's handle, adopt a 409), :mod:`~poolboy.domain.managed_resources` (create and filtered update),
:mod:`~poolboy.domain.object_meta` (the finalizer patch), :mod:`~poolboy.domain.provider` (read providers fresh) and
:mod:`~poolboy.domain.requester` (the OpenShift user). The reconcilers in :mod:`poolboy.reconcilers` compose them.
"""
