"""MutatingAdmissionWebhook and ValidatingAdmissionWebhook (kube's admission/plugin/webhook/mutating
and validating): the webhooks of the Mutating/ValidatingWebhookConfigurations, called over HTTPS
with an AdmissionReview for the writes their rules match.

Both read the configurations from the shared informer (``kapi.admission.webhook.source``) and
wait for it to sync before the first request (kube answers 403 "not yet ready to handle
request" after 10 s). Writes of webhook configurations and admission policies never go to
webhooks (kube's exemption, so that a broken webhook cannot lock itself in). The mutating plugin
calls its webhooks in order and takes their JSON patches; the validating one calls its webhooks in
parallel. See ``kapi.admission.webhook.dispatch`` for the rules.
"""

from __future__ import annotations

import trio

from kapi.admission.matching import is_exempt
from kapi.admission.plugin import Attributes, Plugin, PluginDeps, forbidden
from kapi.admission.webhook import dispatch
from kapi.admission.webhook.auth import resolver_from
from kapi.admission.webhook.metrics import webhook_metrics
from kapi.admission.webhook.source import MUTATING, VALIDATING, HookSource


class _WebhookPlugin(Plugin):
    resource = ""

    def __init__(self, deps: PluginDeps) -> None:
        super().__init__(deps)
        deps.objects.watch("", "namespaces")  # namespaceSelector reads namespaces' labels
        self.source = HookSource(deps.objects, self.resource, deps.client_factory, deps.resolve_service,
                                 resolver_from(deps.configuration.get(self.name), self.name))
        self.metrics = webhook_metrics(deps.registry.metrics)

    async def _ready(self, a: Attributes) -> bool:
        """False for a request webhooks never see; 403 while the configurations are not read yet."""
        if is_exempt(a):
            return False
        if not await self.source.ready():
            raise forbidden(a, "not yet ready to handle request")
        return True

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        await self.source.run()


class MutatingAdmissionWebhook(_WebhookPlugin):
    name = "MutatingAdmissionWebhook"
    resource = MUTATING

    def changing(self) -> bool:
        return not self.source.idle

    async def admit(self, a: Attributes) -> None:
        if not self.source.idle and await self._ready(a):
            await dispatch.mutate(self.name, self.source, a, self.deps, self.metrics)


class ValidatingAdmissionWebhook(_WebhookPlugin):
    name = "ValidatingAdmissionWebhook"
    resource = VALIDATING

    async def validate(self, a: Attributes) -> None:
        if not self.source.idle and await self._ready(a):
            await dispatch.validate(self.source, a, self.deps, self.metrics)
