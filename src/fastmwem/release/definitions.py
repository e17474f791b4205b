"""Privacy definitions as objects: what ``privacy="pure"`` and ``privacy="zcdp"`` stand for.

A definition builds a share's measurement, the event it is charged, the accountant that holds
a budget in its currency, and the guarantee a run's charges give. Every public function still
accepts the strings; :func:`definition_of` reads them.
"""

from fastmwem.release._privacy import (
    PRIVACY_DEFINITIONS,
    PrivacyDefinition,
    PureDefinition,
    ZCDPDefinition,
    definition_of,
)

__all__ = ["PrivacyDefinition", "PureDefinition", "ZCDPDefinition", "definition_of",
           "PRIVACY_DEFINITIONS"]
