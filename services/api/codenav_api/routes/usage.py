"""The operator's and the team's view: usage figures (``/v1/stats``, any token: its own
team's) and Prometheus metrics (``/metrics``: an admin token, or none with
CODENAV_METRICS_OPEN=true)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import Response

from codenav import usage
from codenav.access import Caller
from codenav.roles import authorize
from codenav_api import metrics
from codenav_api.deps import allowed, require_token, services
from codenav_api.service import Services

router = APIRouter(tags=["operations"])


@router.get("/v1/stats", summary="Tokens returned vs reading the files whole, per tool and "
            "day, for what this token sees")
def stats(days: Annotated[int, Query(ge=1, le=usage.MAX_DAYS)] = 7,
          svc: Services = Depends(services),
          caller: Caller = Depends(allowed("stats"))) -> dict[str, Any]:
    return svc.stats(caller, days)


@router.get("/metrics", summary="Prometheus metrics (admin token, or CODENAV_METRICS_OPEN)",
            response_class=Response)
def prometheus(request: Request, svc: Services = Depends(services)) -> Response:
    if not svc.settings.metrics_open:
        authorize(require_token(request), "metrics")
    body, content_type = metrics.render(svc)
    return Response(body, media_type=content_type)
