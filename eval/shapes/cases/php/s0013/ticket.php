<?php

function handle_ticket(PDO $db): void
{
    $param = $_POST['v'] ?? '';
    $bar = '';
    $num = 86;
    $bar = (7 * 42) - $num > 200 ? 'fixed_value' : $param;
    system("ping -c 1 " . $bar);
}
