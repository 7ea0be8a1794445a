"""The API's JSON parser: DRF's, with a bound on how deeply a body may nest.

A body of 100,000 nested arrays is 200 KB, well under the size limit, yet it
makes the JSON decoder raise RecursionError (a 500) and would make any
recursive code that walks the data fail the same way. Too deep a body is a
400 with the usual error body instead.
"""

from __future__ import annotations

from django.conf import settings
from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser

from config.base.validation import nests_deeper_than


class BoundedJSONParser(JSONParser):
    def parse(self, stream, media_type=None, parser_context=None):
        limit = settings.API_MAX_JSON_DEPTH
        message = f"JSON parse error - the body nests deeper than {limit} levels"
        try:
            data = super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise ParseError(message) from None
        if nests_deeper_than(data, limit):
            raise ParseError(message)
        return data
