"""The overprovisioner's leader election: `bucketing.leader`, shared with the extender's
job admitter (one implementation; this name is kept for the overprovisioner's imports).
"""

from bucketing.leader import LeaderElector

__all__ = ["LeaderElector"]
