#include <stdio.h>
#include <syslog.h>

void log_request(const char *line)
{
    syslog(LOG_WARNING, "request: %s", line);
}
