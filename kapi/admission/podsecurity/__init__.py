"""Pod Security admission: the Pod Security Standards' checks (``checks``), namespace policies
from labels (``api``), the plugin's configuration (``config``) and its decisions (``admission``)."""
