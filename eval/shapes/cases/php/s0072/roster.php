<?php

function handle_roster(PDO $db): void
{
    $param = $_POST['v'] ?? '';
    $bar = '';
    $values = [];
    $values[] = 'alpha';
    $values[] = $param;
    $values[] = 'omega';
    array_shift($values);
    $bar = $values[1];
    system("ping -c 1 " . $bar);
}
