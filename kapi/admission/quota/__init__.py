"""Quota's measures, shared by the ResourceQuota admission plugin and the ResourceQuota controller:
resource lists (``resources``) and the evaluators of each resource's usage (``evaluators``)."""
