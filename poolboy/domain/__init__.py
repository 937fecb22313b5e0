"""The claim / handle / pool domain: providers, matching and binding, lifespans, parameters, validation, managed
resources, health, linked providers, requester identity, conditions. Pure functions over Kubernetes documents; the
reconcilers in :mod:`poolboy.reconcilers` compose them."""
