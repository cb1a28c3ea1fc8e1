"""DLRover-RM's warm start on a recorded history (predictor.models.warm_start)."""

from __future__ import annotations

import pytest

from common.errors import InputError
from predictor.models.warm_start import (
    JobProfile,
    RoleShape,
    WarmStartConfig,
    recommend,
    repository,
    similarity,
)

PS = RoleShape(2, 8, 32)
WORKER = RoleShape(8, 4, 16, 1)


def past(name, image="reg/ctr:v1", namespace="ads", labels=None, requested=None,
         final=None, finished_at=0.0):
    requested = requested or {"ps": PS, "worker": WORKER}
    return JobProfile(name, image, namespace, labels or {"team": "ctr"}, requested,
                      final if final is not None else requested, finished_at)


NEW = past("new", image="reg/ctr:v9", final={})


def test_the_image_repository_ignores_tag_and_digest():
    assert repository("reg.io:5000/team/ctr:v2@sha256:abc") == "reg.io:5000/team/ctr"
    assert repository("ctr") == "ctr"


def test_a_job_like_the_new_one_in_every_way_is_fully_alike_and_others_less():
    assert similarity(NEW, past("same")) == pytest.approx(1.0)
    other_image = past("x", image="reg/vision:v1")
    other_namespace = past("y", namespace="search")
    other_shape = past("z", requested={"worker": RoleShape(8, 32, 256, 8)})
    scores = [similarity(NEW, job) for job in (other_image, other_namespace, other_shape)]
    assert all(score < 1 for score in scores)
    assert scores[0] < scores[1]  # the image weighs more than the namespace


def test_the_most_similar_past_jobs_decide_the_start_most_similar_weighing_most():
    history = [
        # Ended with 12 workers of 6 cores: the most alike (same shape, labels).
        past("close", final={"ps": RoleShape(2, 8, 32), "worker": RoleShape(12, 6, 24, 1)},
             finished_at=100),
        # Alike but in another namespace: ended with 4 workers.
        past("further", namespace="search",
             final={"ps": RoleShape(1, 8, 32), "worker": RoleShape(4, 4, 16, 1)}),
        # Another model entirely: never used.
        past("unrelated", image="reg/vision:v1", namespace="cv", labels={"team": "cv"},
             requested={"worker": RoleShape(1, 32, 256, 8)},
             final={"worker": RoleShape(64, 32, 256, 8)}),
    ]
    result = recommend(NEW, history, WarmStartConfig(k=5, alpha=0.5, min_similarity=0.6))
    assert [name for name, _ in result.based_on] == ["close", "further"]
    # Smoothed from the least similar (4) to the most (12): 0.5*12 + 0.5*4 = 8.
    assert result.roles["worker"].pods == 8
    assert result.roles["worker"].cpu == pytest.approx(5.0)
    assert result.roles["ps"].pods == 2  # 0.5*2 + 0.5*1 = 1.5 -> 2 (round half to even)
    assert "unrelated" not in dict(result.based_on)
    only_closest = recommend(NEW, history, WarmStartConfig(k=1))
    assert only_closest.roles["worker"] == RoleShape(12, 6, 24, 1)


def test_no_alike_past_job_gives_no_recommendation_and_says_why():
    history = [past("cv", image="reg/vision:v1", namespace="cv", labels={"team": "cv"},
                    requested={"worker": RoleShape(1, 32, 256, 8)})]
    result = recommend(NEW, history)
    assert result.roles == {} and result.based_on == ()
    assert "no past job is at least 0.5 alike among 1" in result.reason
    assert "start from the job's own request" in result.reason
    assert recommend(NEW, []).reason.startswith("no past job")


@pytest.mark.parametrize("field,value", [("k", 0), ("alpha", 0), ("alpha", 1.5),
                                         ("min_similarity", 2)])
def test_bad_settings_are_refused_by_name(field, value):
    with pytest.raises(InputError, match=f"warm start {field}"):
        WarmStartConfig(**{field: value})
