#include <stdio.h>
#include <string.h>
#include <syslog.h>

void log_request(const char *line)
{
    char buf[512];

    strncpy(buf, line, sizeof buf - 1);
    buf[sizeof buf - 1] = '\0';
    syslog(LOG_WARNING, buf);
}
